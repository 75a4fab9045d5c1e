from ui.screens.chat import chat_page

chat_page("auto")
