"""One module per screen: each page file in pages/ (and the home page) calls one function of one of them."""
