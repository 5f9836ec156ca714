"""One Lambda handler per endpoint: parse, call the domain, render."""
