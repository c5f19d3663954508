"""The Sphinx configuration of this API reference, so it builds as typed (``make docs`` does the same, with ``-W``)::

    pip install -e ".[docs]"
    sphinx-build pyterrier_instruct/pt_docs html

as PyTerrier's documentation site builds it (autodoc, Google-style docstrings through napoleon), with ``cite.dblp``
registered here as a directive that renders a link to the DBLP record without fetching it (PyTerrier's own extension
queries DBLP). PyTerrier's site copies ``pt_docs/`` into its own tree and uses its own configuration: this file is
ignored there (Sphinx reads only ``.rst``/``.md`` sources). tests/test_pt_docs.py builds with it."""
import importlib.util
import sys
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive

if importlib.util.find_spec("pyterrier_instruct") is None:  # a clone, not installed: autodoc imports it from here
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

project = "pyterrier-instruct"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon"]
root_doc = "index"
exclude_patterns = ["_build"]
autodoc_member_order = "bysource"
html_theme = "basic"


class DblpCite(Directive):
    """``.. cite.dblp:: <key>``: a paragraph linking https://dblp.org/rec/<key>."""
    required_arguments = 1
    has_content = False

    def run(self):
        key = self.arguments[0]
        url = f"https://dblp.org/rec/{key}"
        para = nodes.paragraph()
        para += nodes.Text("Reference: ")
        para += nodes.reference(key, f"dblp:{key}", refuri=url)
        return [para]


def setup(app):
    app.add_directive("cite.dblp", DblpCite)
    return {"parallel_read_safe": True}
