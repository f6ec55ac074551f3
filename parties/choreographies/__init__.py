"""A curious controller's deviations from the protocol, for the privacy-enforcement tests.

The honest protocols are step programs of :mod:`mprr.protocols` run by
:func:`parties.driver.run_actors`; what remains here is what no honest program does.

Modules:

- ``malicious`` — a curious controller's extra requests (re-request, finer matrix, unannounced
                  cluster, changed plan, extra phase)
"""
