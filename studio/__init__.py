"""Chain Studio's Streamlit UI: thin pages over agent_core (via studio.services)."""
