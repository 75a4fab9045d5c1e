from ui.screens.review import review_page

review_page()
