from ui.screens.compare import compare_page

compare_page()
