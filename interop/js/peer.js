// An rsocket-js 0.0.27 peer for rs_spark's interoperability tests (tests/net/test_interop_js.py).
//
//   node peer.js server N STEP [TEXTS]  serve "numbers" (request-stream of N JSON ints) and "sink"
//                                       (request-channel: reads what it is sent, requesting STEP at a
//                                       time); prints {"port": P} once listening, then one JSON line
//                                       per finished channel: {"received": [...], "over": k, ...};
//                                       with TEXTS (a file), also "texts": a request-stream of its
//                                       lines, each sent as it is written (one JSON text per payload)
//   node peer.js client PORT ROUTE N TOKEN
//                                       feed ROUTE on 127.0.0.1:PORT over request-channel with N
//                                       JSON ints (0..N-1); prints {"sent": n, "requested": r}
//   node peer.js stream PORT ROUTE TOKEN CREDITS [CANCEL_AFTER [KEEPALIVE_MS LIFETIME_MS]]
//                                       read ROUTE over request-stream, CREDITS at a time (cancel
//                                       after CANCEL_AFTER elements, 0: never); prints
//                                       {"received": [...], "over": k} and "error" if it failed
//
// Elements are JSON text. Every process exits when its standard input closes (the test owns it).
'use strict';

const net = require('net');
const {
  RSocketClient, RSocketServer, BufferEncoders, encodeCompositeMetadata, encodeRoute, decodeCompositeMetadata,
  decodeRoutes, encodeBearerAuthMetadata, MESSAGE_RSOCKET_ROUTING, MESSAGE_RSOCKET_AUTHENTICATION,
} = require('rsocket-core');
const {Flowable} = require('rsocket-flowable');
const RSocketTcpClient = require('rsocket-tcp-client').default;
const RSocketTCPServer = require('rsocket-tcp-server').default;

const COMPOSITE = 'message/x.rsocket.composite-metadata.v0';
const say = (obj) => process.stdout.write(JSON.stringify(obj) + '\n');
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();

function routeOf(metadata) {
  if (!metadata) return null;
  for (const entry of decodeCompositeMetadata(metadata)) {
    if (entry.mimeType === MESSAGE_RSOCKET_ROUTING.string) {
      for (const r of decodeRoutes(entry.content)) return r;
    }
  }
  return null;
}

function decode(data) {
  return data === null || data === undefined || data.length === 0 ? null : JSON.parse(data.toString('utf8'));
}

// A Flowable of JSON ints 0..n-1 (or element i's text from textOf) that counts what it was asked
// for: emits only on demand.
function counted(n, stats, metadataFor, textOf = (i) => JSON.stringify(i)) {
  return new Flowable((subscriber) => {
    let next = 0;
    let done = false;
    subscriber.onSubscribe({
      cancel: () => { done = true; },
      request: (k) => {
        stats.requested += k;
        while (k-- > 0 && next < n && !done) {
          const i = next++;
          stats.sent += 1;
          subscriber.onNext({data: Buffer.from(textOf(i), 'utf8'), metadata: metadataFor(i)});
        }
        if (next >= n && !done) {
          done = true;
          subscriber.onComplete();
        }
      },
    });
  });
}

function serve(n, step, textsFile) {
  const texts = textsFile ? require('fs').readFileSync(textsFile, 'utf8').split('\n').filter((l) => l) : [];
  let tcp;
  const transport = new RSocketTCPServer({
    host: '127.0.0.1', port: 0,
    serverFactory: (onConnection) => {
      tcp = net.createServer(onConnection);
      tcp.on('listening', () => say({port: tcp.address().port}));
      return tcp;
    },
  }, BufferEncoders);
  const server = new RSocketServer({
    transport,
    getRequestHandler: () => ({
      requestStream: (payload) => {
        const route = routeOf(payload.metadata);
        if (route === 'texts' && textsFile) {
          return counted(texts.length, {requested: 0, sent: 0}, () => undefined, (i) => texts[i]);
        }
        if (route !== 'numbers') return Flowable.error(new Error(`no stream named ${route}`));
        return counted(n, {requested: 0, sent: 0}, () => undefined);
      },
      requestChannel: (payloads) => {
        const seen = {received: [], requested: 0, over: 0, route: null, error: null};
        payloads.subscribe({
          onSubscribe: (s) => { seen.s = s; seen.requested += step; s.request(step); },
          onNext: (p) => {
            if (seen.route === null) seen.route = routeOf(p.metadata);
            seen.received.push(decode(p.data));
            if (seen.received.length > seen.requested) seen.over += 1;
            if (seen.received.length === seen.requested) { seen.requested += step; seen.s.request(step); }
          },
          onComplete: () => say({received: seen.received, over: seen.over, route: seen.route}),
          onError: (e) => say({received: seen.received, over: seen.over, route: seen.route, error: e.message}),
        });
        return Flowable.never();
      },
    }),
  });
  server.start();
}

function connect(port, token, keepAlive = 60000, lifetime = 180000) {
  const setupMetadata = token ? encodeCompositeMetadata([
    [MESSAGE_RSOCKET_AUTHENTICATION, encodeBearerAuthMetadata(token)],
  ]) : undefined;
  return new RSocketClient({
    setup: {
      keepAlive, lifetime, dataMimeType: 'application/json', metadataMimeType: COMPOSITE,
      payload: setupMetadata ? {data: null, metadata: setupMetadata} : undefined,
    },
    transport: new RSocketTcpClient({host: '127.0.0.1', port}, BufferEncoders),
  }).connect();
}

function routeMetadata(route) {
  return encodeCompositeMetadata([[MESSAGE_RSOCKET_ROUTING, encodeRoute(route)]]);
}

function feed(port, route, n, token) {
  const stats = {requested: 0, sent: 0};
  connect(port, token).subscribe({
    onComplete: (socket) => {
      // Like rsocket-java, rsocket-js sends element 0 as the REQUEST_CHANNEL frame's data; the
      // route rides in its metadata.
      const out = counted(n, stats, (i) => (i === 0 ? routeMetadata(route) : undefined));
      socket.requestChannel(out).subscribe({
        onSubscribe: (s) => s.request(1),
        onComplete: () => {},
        onError: (e) => say({error: e.message, sent: stats.sent}),
      });
      const poll = setInterval(() => {  // report once the last element has gone out
        if (stats.sent >= n) { clearInterval(poll); say(stats); }
      }, 20);
    },
    onError: (e) => say({error: e.message}),
  });
}

function read(port, route, token, credits, cancelAfter, keepAlive, lifetime) {
  connect(port, token, keepAlive, lifetime).subscribe({
    onComplete: (socket) => {
      const got = [];
      let sub;
      let asked = credits;
      let over = 0;
      socket.requestStream({data: null, metadata: routeMetadata(route)}).subscribe({
        onSubscribe: (s) => { sub = s; s.request(credits); },
        onNext: (p) => {
          got.push(decode(p.data));
          if (got.length > asked) over += 1;
          if (cancelAfter && got.length === cancelAfter) {
            sub.cancel();
            say({received: got, over, cancelled: true});
          } else if (got.length === asked) {
            asked += credits;
            sub.request(credits);
          }
        },
        onComplete: () => say({received: got, over}),
        onError: (e) => say({received: got, over, error: e.message}),
      });
    },
    onError: (e) => say({error: e.message}),
  });
}

const [mode, ...args] = process.argv.slice(2);
if (mode === 'server') serve(Number(args[0]), Number(args[1]), args[2]);
else if (mode === 'client') feed(Number(args[0]), args[1], Number(args[2]), args[3]);
else if (mode === 'stream') {
  read(Number(args[0]), args[1], args[2], Number(args[3]), Number(args[4] || 0), Number(args[5] || 60000),
    Number(args[6] || 180000));
}
else { process.stderr.write(`unknown mode ${mode}\n`); process.exit(2); }
