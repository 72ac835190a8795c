"""Text-to-SQL environments on sqlite: ``sql`` (one answer) and ``sql-multiturn`` (explore first).

See ``envhub/envs/sql/README.md`` for the task format, the guards and the comparison rules.
"""
