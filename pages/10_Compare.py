from ui.compare_page import compare_page

compare_page()
