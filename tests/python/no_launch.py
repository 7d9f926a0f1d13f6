KBENCH = [dict(op="rope", name="x")]
