"""The DP core every family shares: driver-side maths, no Spark (docs/design/index.md).

* :mod:`.calibration`: the budget, the Gaussian and Laplace mechanisms' noise, the samplers'
  δ floor;
* :mod:`.protocol`: what every calibration states (its budget, its dp-accounting event);
* :mod:`.composition`: how the noise of a release's steps, or of releases, composes;
* :mod:`.accounting` and :mod:`.filters`: the budget store's accountants and privacy filter;
* :mod:`.gem`: the generalized exponential mechanism (the distinct count's ℓ, partition
  selection's Δ0);
* :mod:`.registry`: one registry of algorithms per family.

Nothing is imported here: ``spark-dp <job> --help`` loads none of scipy or dp-accounting.
"""
