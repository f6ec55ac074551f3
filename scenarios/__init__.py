"""scenarios — runnable scenarios: TOML configs, the runner / CLI and report writers.

Imports go one way: ``scenarios`` → ``parties`` → ``mprr``. Scenarios may read files and use
clocks; ``mprr`` may not.

Modules, in dependency order:

- ``config``     — TOML reading and schema validation (key, bad value, what is allowed)
- ``overrides``  — ``--set KEY=VALUE``: one parameter override read as TOML
- ``progress``   — dependency-free progress bars on stderr
- ``plots``      — PNG figures (matplotlib Agg canvas, no pyplot)
- ``report``     — ``ScenarioResult``; results.json and report.md writers
- ``registry``   — runner kinds and the shipped configs (``configs/*.toml``)
- ``out_dir``    — the output folder: refused when it holds files mprr did not write, removed
                   again when a run that created it fails
- ``runner``     — run a scenario and write its report
- ``datasets``   — file I/O: ``load_adult`` (the shipped copy in ``data/adult``, CC BY 4.0),
                   ``load_table`` (CSV or Parquet), ordinal columns, malformed rows
- ``by_name``    — ``mprr simulate PROTOCOL``: a registered protocol run by name; ``--plugin``
                   modules that register a user's protocols, engines, matrix families
- ``cli``        — the ``mprr`` command (``run``, ``simulate``, ``list``, ``show``, ``party``)
- ``montecarlo`` — parallel Monte Carlo over runs with per-run seeds
- ``tables``     — ``bistochastic_table``, ``lambda_table`` (the two papers' Table 1)
- ``adult_queries`` — Adult loading / subsampling, query evaluation, the printed-ε option
- ``paper_adult`` — ``adult_table1``, ``adult_table2`` (main paper Tables I, II); what Figure 3 shares
- ``paper_adult_figures`` — ``adult_figure3`` (main paper Figures 2 and 3)
- ``kikuchi``    — ``kikuchi_sweeps`` (RR-Ind-Joint paper Fig. 5–8, Table 1)
- ``cost_model``  — exact closed-form costs from the codec's message sizes; measuring helpers
- ``privacy_report`` — privacy section of run reports: ε per party / phase under every policy,
                     β, no-DP flag, refusals, replays; the budget per respondent in words (budget_statement)
- ``protocol_run`` — ``ProtocolRun``: one base protocol run plus its RR-Adjustment
- ``anonymization_figures`` — local_anonymization's figures: query-error boxes, dependence heat
                     maps, ε per phase
- ``anonymization_report`` — results, tables, figures and summary of local_anonymization
- ``estimates_report`` — own data: estimated marginals and strongest 2-way tables with their
                     intervals beside the truth (report tables, results.json, estimates.csv)
- ``local_anonymization`` — the default demo: RR-Clusters + Adjustment through the actors
- ``communication`` — ``communication_cost``: measured vs closed-form costs
- ``communication_figures`` — communication_cost's log-log figures: measured markers beside
                     closed-form lines
- ``faults``     — ``secure_sum_faults``: dropout rate vs outcome per engine
- ``network_time`` — ``network_time``: virtual completion time per engine and network profile,
                   where the time went, the timeline of one run
"""
