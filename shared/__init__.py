"""The domain and the store of the emit job queue, shared by every Lambda function (a layer)."""
