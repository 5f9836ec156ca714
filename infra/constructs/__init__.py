"""One construct per concern: data, functions, api, monitoring, triggers."""
