"""Solutions to the chapters' exercises, one module per chapter, named as in the notebooks.

Try the exercise first. Each notebook's check cell says "not yet" with a hint until your code
does what is asked; ``tests/test_exercises_chNN.py`` runs the same checks against these solutions.
"""
