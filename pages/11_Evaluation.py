from ui.evaluation_page import evaluation_page

evaluation_page()
