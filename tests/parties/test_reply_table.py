"""parties.reply_table: the replies to a release request as one checked (parties, units) table."""

from __future__ import annotations

import numpy as np

from parties.cohort import ReplyLayout
from parties.reply_table import reply_table
from parties.wire.messages import RandomizedValues


def test_replies_land_at_their_targets_rows_and_bad_ones_are_malformed() -> None:
    # units of 3 and 2 cells; party 5 sends a code outside its unit, party 1 too few codes,
    # party 4 never answers, party 2 answers in a block of columns
    values = {3: RandomizedValues(1, np.array([2, 1])), 5: RandomizedValues(1, np.array([3, 0])),
              1: RandomizedValues(1, np.array([0]))}
    block = ReplyLayout.of(1, np.array([[1, 0]], dtype=np.int64)).columns(np.array([2]), "p", slice(0, 1))
    table = reply_table([1, 2, 3, 4, 5], [3, 2], values, [block])
    assert list(table.parties) == [2, 3] and table.codes.tolist() == [[1, 0], [2, 1]]
    assert table.malformed == {
        1: "malformed reply [0] (2 codes within the unit domains expected)",
        5: "malformed reply [3, 0] (2 codes within the unit domains expected)",
    }


def test_targets_in_any_order_keep_their_order() -> None:
    values = {9: RandomizedValues(1, np.array([1])), 2: RandomizedValues(1, np.array([0]))}
    table = reply_table([9, 2], [2], values, [])
    assert list(table.parties) == [9, 2] and table.codes.tolist() == [[1], [0]] and not table.malformed


def test_one_block_of_everyone_in_target_order_is_the_table_itself() -> None:
    codes = np.array([[0, 1], [2, 0], [1, 1]], dtype=np.int64)
    codes.flags.writeable = False
    block = ReplyLayout.of(4, codes).columns(np.array([0, 1, 2]), "p", slice(0, 3))
    targets = [0, 1, 2]
    table = reply_table(targets, [3, 2], {}, [block])
    assert table.codes is block.codes and table.parties is targets and not table.malformed
    out_of_domain = reply_table(targets, [2, 2], {}, [block])  # (2 is outside a unit of 2 cells)
    assert list(out_of_domain.parties) == [0, 2] and out_of_domain.codes.tolist() == [[0, 1], [1, 1]]
    assert list(out_of_domain.malformed) == [1]
