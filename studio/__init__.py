"""Chain Studio's Streamlit UI: thin screens over agent_core (via studio.services)."""
