"""Sphinx extension: the student edition of the book, without the exercises' solutions.

``companions_student_edition: true`` (set by ``python -m companions student-edition``) removes every
solution from the rendered pages, the gated ones (``{solution-start}`` ... ``{solution-end}``, which
hold the graded answers' code cells) included. sphinx-exercise's own ``hide_solutions`` cannot be
used for that: with it, ``solution-start`` renders nothing but the content up to ``solution-end``
stays on the page, and the leftover end marker stops the HTML writer (sphinx-exercise 1.2.1).
"""

from __future__ import annotations

from sphinx.transforms import SphinxTransform
from sphinx_exercise.nodes import solution_end_node, solution_node, solution_start_node


class RemoveSolutions(SphinxTransform):
    """Drop solution nodes once sphinx-exercise has merged the gated ones (its priority is 10)."""

    default_priority = 20

    def apply(self):
        if not self.config.companions_student_edition:
            return
        for kind in (solution_node, solution_start_node, solution_end_node):
            for node in list(self.document.findall(kind)):
                node.parent.remove(node)


def setup(app):
    app.add_config_value("companions_student_edition", False, "env")
    app.add_transform(RemoveSolutions)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
