"""Export: a checkpoint as an RLBot v5 bot folder (bundle.py) or an ONNX actor (onnx_export.py)."""
