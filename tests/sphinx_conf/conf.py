"""A Sphinx configuration for building ``pyterrier_instruct/pt_docs`` offline in the tests (tests/test_pt_docs.py), as
PyTerrier's documentation site builds it (autodoc, Google-style docstrings through napoleon), with ``cite.dblp``
registered here as a directive that renders a link to the DBLP record without fetching it (PyTerrier's own extension
queries DBLP for the reference, which a test cannot do)."""
from docutils import nodes
from docutils.parsers.rst import Directive

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
