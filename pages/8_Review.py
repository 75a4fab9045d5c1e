from ui.review_page import review_page

review_page()
