from ui.knowledge_page import knowledge_page

knowledge_page()
