"""The Streamlit side, in folders top to bottom: screens, run, evidence, shell, i18n (docs/ARCHITECTURE.md, "The UI")."""
