from ui.screens.knowledge import knowledge_page

knowledge_page()
