package io.pdconnector.bench;

import io.pdconnector.bench.load.PlotWriter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.TreeMap;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;

/** StepBench's plot: D's first step against N (left) and the time per request until all N are decided (right), a line per R. */
final class StepPlot {

    private static final int WIDTH = 700;
    private static final int HEIGHT = 450;

    record Cell(int ranks, int requests, long firstStepNanos, double perRequestNanos) {
    }

    private StepPlot() {
    }

    static Path write(List<Cell> cells, Path dir) throws IOException {
        Files.createDirectories(dir);
        XYChart step = chart("D's step that takes N pull commands", "step time (us, log)");
        XYChart perRequest = chart("Time until all N are decided, per request", "us per request (log)");
        TreeMap<Integer, List<Cell>> byRanks = new TreeMap<>();
        for (Cell c : cells) {
            byRanks.computeIfAbsent(c.ranks(), k -> new java.util.ArrayList<>()).add(c);
        }
        byRanks.forEach((r, row) -> {
            double[] n = row.stream().mapToDouble(Cell::requests).toArray();
            add(step, "R=" + r, n, row.stream().mapToDouble(c -> c.firstStepNanos() / 1e3).toArray());
            add(perRequest, "R=" + r, n, row.stream().mapToDouble(c -> c.perRequestNanos() / 1e3).toArray());
        });
        Path file = dir.resolve("step-" + java.time.LocalDateTime.now().format(
                java.time.format.DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")) + ".png");
        PlotWriter.writeSideBySide(step, perRequest, file);
        return file;
    }

    private static XYChart chart(String title, String yTitle) {
        XYChart chart = new XYChartBuilder().width(WIDTH).height(HEIGHT).title(title)
                .xAxisTitle("pull commands in the step, N (log)").yAxisTitle(yTitle).build();
        chart.getStyler().setXAxisLogarithmic(true).setYAxisLogarithmic(true);
        chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideNW);
        return chart;
    }

    private static void add(XYChart chart, String name, double[] x, double[] y) {
        XYSeries s = chart.addSeries(name, x, y);
        s.setXYSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Line);
    }
}
