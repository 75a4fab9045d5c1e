"""Home page: what each pattern does and which model is active."""

import streamlit as st

from core.config import load_settings
from core.models import check
from core.patterns import all_patterns

st.set_page_config(page_title="Agentic RAG Studio", page_icon="🧭", layout="wide")
st.title("Agentic RAG Studio")
settings = load_settings()
status = check(settings)
st.caption(f"Model: {status.line()}")
for pattern in all_patterns():
    with st.container(border=True):
        st.subheader(pattern.title)
        st.write(pattern.description)
