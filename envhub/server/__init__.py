"""The server part: serves any environment over HTTP.

The FastAPI app, its sessions, the Docker image and runner. Imports the core only.
"""
