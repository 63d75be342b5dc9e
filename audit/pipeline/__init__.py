"""Pipeline layer: one audit from its config to its result, by calls into the layers below.

``config`` (TOML schema and validation), ``plan`` (the pair and every ceiling, before any
sampling), ``runner`` (orchestration of the model's audits), ``implementation`` (audits of
black-box implementations), ``budget`` (expected durations), ``results`` (the result, JSON).
"""
