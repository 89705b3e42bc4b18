"""What `streamlit run app/serve.py` serves: the lab's pages (app/streamlit_app.py) as an ``st.App``, with three
middlewares in front of Streamlit's server (app/server/middleware.py): every page says where the server is (a
deep link such as /lessons logs no 404s), Streamlit's scripts go out compressed, each compressed once, and the
Playground's chart library is served (app/elements/live_chart.py). The pages' imports are done here, before the
server listens, not by its first visitor (app/server/preload.py)."""

import streamlit as st
from starlette.middleware import Middleware

from app.server.middleware import ChartLibrary, CompressedScripts, ServerRootInPage
from app.server.nodelay import send_at_once
from app.server.preload import preload
from app.server.request_heads import read_heads_whole

preload()
send_at_once()  # connections without Nagle's 40 ms wait (app/server/nodelay.py)
read_heads_whole()  # a long link's answer does not depend on how the network cut it (app/server/request_heads.py)

app = st.App(
    "streamlit_app.py",
    middleware=[Middleware(ServerRootInPage), Middleware(CompressedScripts), Middleware(ChartLibrary)],
)
