"""mprr — the pure mathematics of multi-dimensional randomized response.

No asyncio, no files, no clocks, no printing, no import of ``parties`` or ``scenarios``:
everything here is a deterministic function of its inputs and of an explicit
``numpy.random.Generator``.

Modules, in dependency order (each may import only those above it):

- ``errors``      — the one exception hierarchy (``MprrError`` and subclasses)
- ``streams``     — per-party random streams spawned from one run seed
- ``matrices``    — validated randomization matrices, constructors, lazy Kronecker products
- ``randomize``   — inverse-CDF local randomization of codes through a matrix row
- ``estimation``  — eq. (2) inversion (mode products for Kronecker), clip/rescale, simplex
                    projection, IBU, covariance (Nayak 3.2), error bounds (eq. 5, 6)
- ``data``        — attributes, schemas, encoded data sets, Adult loader, synthetic generators
- ``metrics``     — count queries, query generator, absolute/relative error, MAE, MSE, TVD
- ``dependence``  — |Pearson| (eq. 8), Cramér's V (eq. 9), dependence matrices
- ``clustering``  — Algorithm 1 (attribute clustering) and the dependence graph
- ``adjustment``  — Algorithm 2 (RR-Adjustment record weights)
- ``privacy``     — privacy ledgers, composition policies, budgets
- ``protocols``   — fast-path simulation of every protocol of the papers
"""

__version__ = "0.1.0"
