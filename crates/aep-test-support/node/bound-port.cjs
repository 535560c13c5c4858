// Preloaded into the reference relay (NODE_OPTIONS=--require=THIS) by the SDK's tests,
// benches and CI scripts, which start it with AEP_PORT=0: the relay then prints the port
// it was given (0), not the one it took, so this writes the port the server took to the
// file AEP_BOUND_PORT_FILE names. Nothing binds a port, releases it and hands it on.
'use strict';
const fs = require('fs');
const net = require('net');
const file = process.env.AEP_BOUND_PORT_FILE;
if (file) {
  const listen = net.Server.prototype.listen;
  net.Server.prototype.listen = function (...args) {
    this.once('listening', () => {
      const address = this.address();
      if (address && typeof address === 'object') {
        // written whole, then renamed: a reader never sees half a number
        fs.writeFileSync(`${file}.tmp`, String(address.port));
        fs.renameSync(`${file}.tmp`, file);
      }
    });
    return listen.apply(this, args);
  };
}
