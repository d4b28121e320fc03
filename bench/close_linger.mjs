// Preloaded into node (NODE_OPTIONS=--import=…) by bench/close.sh: keeps the process running
// after its stdin ends, as a server with a timer, a watcher or an open connection does. Nothing
// else changes; a signal still ends it.
setInterval(() => {}, 1 << 30);
