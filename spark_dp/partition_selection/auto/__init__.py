"""``--max-contributions auto``: Δ0 chosen privately, and what it costs (docs/design/tuning.md).

* :mod:`.plan`: the plan of an auto release (the choice's share of ε, the candidates, the
  selection's budget) and :func:`~.plan.plan_auto`;
* :mod:`.calibration`: the score of each candidate Δ0, its sensitivity, GEM's choice;
* :mod:`.composition`: the PLD certificate of how much ε the selection keeps after the choice;
* :mod:`.scores`: the Spark pass that computes the candidates' scores from the pairs.

Nothing is imported here: the family's entry points import the modules they need.
"""
