"""Controller-side choreographies of every protocol run by the actor simulator.

Modules:

- ``common``    — matrix specifications mirroring the fast path's matrices
- ``basic``     — RR-Independent, RR-Joint, RR-Ind-Joint, λ-randomization (one release phase)
- ``clusters``  — RR-Clusters (dependence 4.1, Algorithm 1, cluster release) and RR-Adjustment
- ``malicious`` — a curious controller's extra requests (re-request, finer matrix, unannounced
                  cluster, changed plan, extra phase) for the privacy-enforcement tests
- ``registry``  — protocol names, aliases and parameter checking for :func:`parties.simulate`
"""
