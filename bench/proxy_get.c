/* A closed-loop memcached `get` client for the proxy's cost on loopback (bench/proxy.sh).
 *
 *   proxy_get PORT CONNECTIONS GETS KEYS PREFIX
 *
 * CONNECTIONS threads, each with one TCP connection to 127.0.0.1:PORT, send GETS gets in all
 * (split evenly), one at a time per connection: `get PREFIX<n>` for n cycling over 0..KEYS-1.
 * Each get's latency is measured from sending the request to reading the closing `END`.
 * Prints one JSON line: gets, hits, errors, seconds, gets per second, p50/p99/max latency (µs).
 * A connection that fails stops its thread (counted in errors); every loop is bounded by GETS.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct worker {
    int id, port, connections;
    long gets, keys;
    const char *prefix;
    uint64_t *latency_ns; /* one per get this worker sends */
    long done, hits, errors;
};

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int connect_to(int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct timeval tv = {.tv_sec = 5};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Reads one answer to a single-key get into buf; 1 on a hit, 0 on a miss, -1 on an error. */
static int read_answer(int fd, char *buf, size_t cap) {
    size_t len = 0;
    for (;;) {
        ssize_t n = recv(fd, buf + len, cap - len - 1, 0);
        if (n <= 0)
            return -1;
        len += (size_t)n;
        buf[len] = 0;
        if (len >= 5 && memcmp(buf + len - 5, "END\r\n", 5) == 0)
            return strncmp(buf, "VALUE ", 6) == 0 ? 1 : 0;
        if (strncmp(buf, "SERVER_ERROR", 12) == 0 || strncmp(buf, "ERROR", 5) == 0 ||
            strncmp(buf, "CLIENT_ERROR", 12) == 0) {
            if (memchr(buf, '\n', len))
                return -1;
        }
        if (len + 1 >= cap)
            return -1;
    }
}

static void *run(void *arg) {
    struct worker *w = arg;
    char req[256], buf[65536];
    int fd = connect_to(w->port);
    if (fd < 0) {
        w->errors = w->gets;
        return NULL;
    }
    for (long i = 0; i < w->gets; i++) {
        long k = (i * w->connections + w->id) % w->keys;
        int n = snprintf(req, sizeof req, "get %s%ld\r\n", w->prefix, k);
        uint64_t t0 = now_ns();
        if (send(fd, req, (size_t)n, 0) != n) {
            w->errors += w->gets - i;
            break;
        }
        int got = read_answer(fd, buf, sizeof buf);
        if (got < 0) {
            w->errors += w->gets - i;
            break;
        }
        w->latency_ns[w->done++] = now_ns() - t0;
        w->hits += got;
    }
    close(fd);
    return NULL;
}

static int by_value(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: %s PORT CONNECTIONS GETS KEYS PREFIX\n", argv[0]);
        return 2;
    }
    int port = atoi(argv[1]), connections = atoi(argv[2]);
    long gets = atol(argv[3]), keys = atol(argv[4]);
    if (port <= 0 || connections <= 0 || connections > 256 || gets <= 0 || keys <= 0) {
        fprintf(stderr, "proxy_get: PORT, CONNECTIONS (1-256), GETS and KEYS must be positive\n");
        return 2;
    }
    uint64_t *latency = calloc((size_t)gets, sizeof *latency);
    struct worker *w = calloc((size_t)connections, sizeof *w);
    pthread_t *t = calloc((size_t)connections, sizeof *t);
    if (!latency || !w || !t)
        return 1;
    long offset = 0;
    for (int i = 0; i < connections; i++) {
        long share = gets / connections + (i < gets % connections);
        w[i] = (struct worker){.id = i, .port = port, .connections = connections, .gets = share,
                               .keys = keys, .prefix = argv[5], .latency_ns = latency + offset};
        offset += share;
    }
    uint64_t t0 = now_ns();
    for (int i = 0; i < connections; i++)
        pthread_create(&t[i], NULL, run, &w[i]);
    long done = 0, hits = 0, errors = 0;
    for (int i = 0; i < connections; i++) {
        pthread_join(t[i], NULL);
        hits += w[i].hits;
        errors += w[i].errors;
    }
    double seconds = (double)(now_ns() - t0) / 1e9;
    /* Pack the measured latencies of all workers together, then sort them. */
    for (int i = 0; i < connections; i++) {
        memmove(latency + done, w[i].latency_ns, (size_t)w[i].done * sizeof *latency);
        done += w[i].done;
    }
    qsort(latency, (size_t)done, sizeof *latency, by_value);
    double p50 = done ? (double)latency[done / 2] / 1e3 : 0;
    double p99 = done ? (double)latency[(done * 99) / 100] / 1e3 : 0;
    double max = done ? (double)latency[done - 1] / 1e3 : 0;
    printf("{\"gets\": %ld, \"hits\": %ld, \"errors\": %ld, \"seconds\": %.3f, \"rate\": %.0f, "
           "\"p50_us\": %.1f, \"p99_us\": %.1f, \"max_us\": %.1f}\n",
           done, hits, errors, seconds, done / seconds, p50, p99, max);
    return errors ? 1 : 0;
}
