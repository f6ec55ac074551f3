"""mprr — the pure mathematics of multi-dimensional randomized response.

No asyncio, no files, no clocks, no printing, no import of ``parties`` or ``scenarios``:
everything here is a deterministic function of its inputs and of an explicit
``numpy.random.Generator``.

Modules, in dependency order (each may import only those above it):

- ``errors``        — the one exception hierarchy (``MprrError`` and subclasses)
- ``registry``      — ``Registry``: the one pattern for whatever is chosen by name (protocols,
                      matrix families, secure-sum engines), with its public ``register``
- ``parameters``    — value types (``Int``, ``Float``, ``Choice``, ``PerAttribute``, ``Registered``
                      ...) and ``Parameters``, the base of
                      the frozen, validated parameter objects (``checked_parameters`` builds one from a
                      caller's table, naming the caller's key)
- ``domain``        — the one check of each kind (int, real, ε, unit interval, cells); joint codes
                      (ravel / unravel) and tallies
- ``streams``       — per-party random streams spawned from one run seed; draw-order contract
- ``guide_table``   — guide tables: the inverse-CDF sample of a matrix row in a constant number of
                      passes, bit-identical to the binary search
- ``randomization_matrix`` — ``RandomizationMatrix``: a validated randomization matrix (eq. (1)), its ε, β, inverse
- ``kronecker``     — lazy Kronecker products over joint domains (never materialized)
- ``matrices``      — the papers' constructors (GRR, keep-or-uniform, cluster-optimal, ...), ``kron``
- ``matrix_families`` — ``MatrixFamily`` objects (name, parameters, needs, build) in the registry
                      ``MATRIX_FAMILIES``; ``register_matrix_family`` for a family of one's own;
                      ``MatrixSpec``, a matrix named by family and parameters, rebuilt over any unit
- ``randomize``     — inverse-CDF local randomization of codes through a matrix row
- ``hashing``       — the universal hash family of local hashing (multiply-add-shift, splitmix64
                      seeds), vectorized over (reports x cells)
- ``frequency_oracle`` — ``FrequencyOracle``, the interface the oracles share: Wang et al.'s
                      estimator and its variance, the checks of reports and uniforms
- ``oracles``       — frequency oracles GRR, OUE, OLH (Wang et al. 2017): perturb from uniforms,
                      support counts, unbiased estimates, variance formulas, best_oracle
- ``estimation``    — eq. (2) inversion (mode products for Kronecker), clip/rescale, simplex
                      projection, IBU, covariance (Nayak 3.2) and its marginals, error bounds
                      (eq. 5, 6)
- ``distributions`` — JointDistribution protocol; Dense / Product / WeightedSample; sample()
- ``data``          — attributes, schemas, encoded data sets, the Adult schema and parser
- ``dependence``    — |Pearson| (eq. 8), Cramér's V (eq. 9), dependence matrices, the V of noise alone
- ``synthetic``     — zipf_pair (RR-Ind-Joint 4.1), planted_clusters (known truth, demo data)
- ``metrics``       — count queries, the 6.5 query generator, eq. (16) errors, MAE, MSE, TVD
- ``marginals``     — marginal tables over attribute subsets: projection, Norm-Sub, PriView/CALM
                      consistency of overlapping marginals
- ``maxent``        — maximum-entropy (IPF) reconstruction of a marginal or the joint from marginals
- ``independence``  — tests of independence of two attributes from randomized reports (Pearson's χ²
                      on product channels, Wald on debiased estimates), bias-corrected Cramér's V
- ``clustering``    — Algorithm 1 (attribute clustering)
- ``pair_cover``    — overlapping release units of at most three attributes covering every attribute
                      pair (greedy weighted set cover), their predicted error and respondent shares
- ``adjustment``    — Algorithm 2 (RR-Adjustment record weights)
- ``privacy``       — privacy accounting (package, own map): releases and their ε, composition
                      policies, ledgers, the per-party accountant, the summary over parties
- ``protocols``     — every protocol as a step program, the local driver (package, own map)
"""

__version__ = "0.1.0"
