"""A server that listens but is not ready: every GET answers 503, as an
inference server still loading its model does. `magpie benchmark --endpoint`
waits for it (a refused connection, by contrast, fails at once)."""
import http.server
import threading
from contextlib import contextmanager


class _NotReady(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(503)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@contextmanager
def not_ready_server():
    """Yields the server's URL (http://127.0.0.1:PORT) while it runs."""
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotReady)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()
