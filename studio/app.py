"""Placeholder until the studio issue lands."""
import streamlit as st

st.title("Chain Studio")
st.write("The studio is being built.")
