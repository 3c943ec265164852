"""Job entry points: argument parsing, configuration, session, I/O and report for each job.

``jobs/<name>.py`` (spark-submit entry points) and the ``spark-dp`` command both call the
``main`` of :mod:`spark_dp.jobs.<name>`; the algorithms themselves live in the library.
"""
