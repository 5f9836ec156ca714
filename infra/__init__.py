"""The CDK app that stands the whole service up in one AWS account: `make synth`, `cdk deploy`.

`app.py` is the entry point, `stack.py` composes one construct per concern from
`constructs/`, `access.py` says what each function may do, `bundling.py` builds the
Lambda layers without Docker, and `first_token.py` mints the first admin token.
"""
