"""Notebook 04's exercise checkers: the worked solutions pass, neighbouring regimes do not.

The generic checks (no bisection, each mistake triggers only its own hint) in
``tests/test_exercises.py`` run over every registered exercise, these included."""




