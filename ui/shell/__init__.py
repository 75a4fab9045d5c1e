"""The frame every page shares: the sidebar, the navigation, the access gate, session state, the page index."""
