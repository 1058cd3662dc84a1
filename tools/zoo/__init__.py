"""The model zoo: public architectures with random weights, exported to ONNX here (nothing is
downloaded), each run on the EP and on ORT's own EP of the same device, with a table of what the EP
claims, how far its outputs are from ORT's and how its session creation and run times compare.

    python tools/zoo [--models NAME ...] [--backend cpu|cuda] [--json FILE]     (needs torch, transformers)

Models are written once into a cache folder (`--cache`, default build/zoo) and reused."""
