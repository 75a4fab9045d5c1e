"""What the tests share: scripted models, servers, app and browser drivers, corpora, paths."""
