"""What listens on 127.0.0.1: the demo model (demo_model: the brain, demo_server: HTTP) and the recording
proxy (proxy); _background runs either in a thread or in the foreground."""
