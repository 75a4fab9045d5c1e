from ui.screens.evaluation import evaluation_page

evaluation_page()
