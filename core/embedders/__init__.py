"""The text embedders, one class per model: `base` (the contract every embedder keeps, and EmbeddingError),
`local` (the offline models, run on onnxruntime or numpy from pinned weight files) and `remote` (any
OpenAI-compatible embeddings API). core.embeddings builds the set of them that Mnemo stores per point.
"""
