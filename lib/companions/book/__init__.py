"""The book's machinery: the command line, graded assignments, Sphinx extensions, static files.

Nothing outside this subpackage imports it, and nothing a chapter imports from it needs more than
the package's own dependencies (``answers`` uses sympy only), so a chapter runs on Colab.
"""
