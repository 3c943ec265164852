"""The sweep of issue 39: a few hundred command lines a careless or hostile user would type,
against the three jobs and the ``spark-dp`` command (``make sweep``; the table in
:mod:`tests.sweep.cases`)."""
