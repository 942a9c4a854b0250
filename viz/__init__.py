"""Attention visualisation: numpy arrays and token lists in, plotly figures out. No gradio, no torch."""
