"""The one training engine every stage runs through (MLM pre-training, CFR, CAR, the
ReProver-style retriever, the tactic generator).

A stage says what is particular to it (its batches, its loss, its evaluation, how its model is
saved: `engine.Stage`); `engine.fit` does the rest: the optimizer and schedule, gradient
accumulation, bf16 on CUDA, gradient clipping, data-parallel workers (`workers.Workers`),
checkpoints that resume, the CPU-time budget, labelled progress and the JSON-lines log.
`launch.launch` runs a stage in this process (one worker) or on N Ray Train workers, on one
machine or a cluster (`ray job submit`), from the same command.
"""
