"""Chroma collections, loaders, sources (collections as the patterns see them), entity graphs, web search, citations."""
