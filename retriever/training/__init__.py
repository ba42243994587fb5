"""One command per training stage: MLM pre-training, CFR, CAR, the ReProver-style baseline, the fusion."""
