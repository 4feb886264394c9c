// The Hive metastore thrift service, listening on one address only.
//
// Hive 3.1's own main (HiveMetaStore -p PORT) binds every interface and has no setting for it; the stack's
// services listen on loopback only. This is its unsecured path (no SASL, no SSL, binary protocol, unframed:
// what Spark's built-in Hive client speaks) with the server socket bound to the address given.
//
// Usage: java -cp <conf dir>:<hive lib>/*:... org.apache.hadoop.hive.metastore.LoopbackMetastore HOST PORT
package org.apache.hadoop.hive.metastore;

import java.lang.reflect.Method;
import java.net.InetSocketAddress;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hive.metastore.api.ThriftHiveMetastore;
import org.apache.hadoop.hive.metastore.conf.MetastoreConf;
import org.apache.hadoop.hive.metastore.conf.MetastoreConf.ConfVars;
import org.apache.thrift.protocol.TBinaryProtocol;
import org.apache.thrift.protocol.TProtocol;
import org.apache.thrift.server.ServerContext;
import org.apache.thrift.server.TServerEventHandler;
import org.apache.thrift.server.TThreadPoolServer;
import org.apache.thrift.transport.TServerSocket;
import org.apache.thrift.transport.TTransport;
import org.apache.thrift.transport.TTransportFactory;

public final class LoopbackMetastore {
  private LoopbackMetastore() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 2) {
      System.err.println("usage: LoopbackMetastore HOST PORT");
      System.exit(2);
    }
    String host = args[0];
    int port = Integer.parseInt(args[1]);
    Configuration conf = MetastoreConf.newMetastoreConf();
    if (MetastoreConf.getBoolVar(conf, ConfVars.USE_THRIFT_SASL) || MetastoreConf.getBoolVar(conf, ConfVars.USE_SSL)
        || MetastoreConf.getBoolVar(conf, ConfVars.USE_THRIFT_FRAMED_TRANSPORT)
        || MetastoreConf.getBoolVar(conf, ConfVars.USE_THRIFT_COMPACT_PROTOCOL)) {
      System.err.println("LoopbackMetastore serves the plain binary protocol only: use HiveMetaStore for SASL, SSL, "
          + "framed or compact transports");
      System.exit(2);
    }
    long maxMessageSize = MetastoreConf.getLongVar(conf, ConfVars.SERVER_MAX_MESSAGE_SIZE);
    // the handler opens the backing database first: a wrong JDBC setting fails here, before the port is open,
    // so an open port means a metastore that answers
    ThriftHiveMetastore.Iface handler = HiveMetaStore.newRetryingHMSHandler("lakecompact metastore", conf, false);
    // HiveMetaStore's own per-connection clean-up (private): each connection's thread-local RawStore is shut
    // down when the connection closes, or every client would leave a database connection behind
    Method cleanup = HiveMetaStore.class.getDeclaredMethod("cleanupRawStore");
    cleanup.setAccessible(true);

    TServerSocket socket = new TServerSocket(new InetSocketAddress(host, port));
    TThreadPoolServer.Args serverArgs = new TThreadPoolServer.Args(socket)
        .processor(new TSetIpAddressProcessor<>(handler))
        .transportFactory(new TTransportFactory())
        .protocolFactory(new TBinaryProtocol.Factory())
        .inputProtocolFactory(new TBinaryProtocol.Factory(true, true, maxMessageSize, maxMessageSize))
        .minWorkerThreads(MetastoreConf.getIntVar(conf, ConfVars.SERVER_MIN_THREADS))
        .maxWorkerThreads(MetastoreConf.getIntVar(conf, ConfVars.SERVER_MAX_THREADS));
    TThreadPoolServer server = new TThreadPoolServer(serverArgs);
    server.setServerEventHandler(new TServerEventHandler() {
      @Override public void preServe() {
        System.out.println("metastore serving on " + host + ":" + port);
        System.out.flush();
      }
      @Override public ServerContext createContext(TProtocol in, TProtocol out) { return null; }
      @Override public void deleteContext(ServerContext context, TProtocol in, TProtocol out) {
        try {
          cleanup.invoke(null);
        } catch (ReflectiveOperationException e) {
          throw new IllegalStateException("metastore connection clean-up failed", e);
        }
      }
      @Override public void processContext(ServerContext context, TTransport in, TTransport out) {}
    });
    server.serve();
  }
}
