"""Home page of Agentic RAG Studio; every file in pages/ is another page (auto-discovery)."""

from ui.screens.home import home_page

home_page()
