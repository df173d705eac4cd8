// Loaded with NODE_OPTIONS=--require into a peer server: every TCP socket it opens gets TCP_NODELAY,
// so its figure measures its own work rather than Nagle's algorithm holding back small SSH packets.
const net = require("node:net");

const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function connectWithNoDelay(...args) {
  this.setNoDelay(true);
  return connect.apply(this, args);
};
