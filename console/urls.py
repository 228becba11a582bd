from django.urls import path

from console import views

urlpatterns = [
    path("", views.evaluation_page, name="evaluation"),
    path("questions/", views.question_add, name="evaluation_question_add"),
    path("questions/<int:pk>/row/", views.question_row, name="evaluation_question_row"),
    path("questions/<int:pk>/edit/", views.question_edit, name="evaluation_question_edit"),
    path("questions/<int:pk>/delete/", views.question_delete, name="evaluation_question_delete"),
    path("pick/", views.answer_picker, name="evaluation_answer_picker"),
    path("answers/", views.answer_mark, name="evaluation_answer_mark"),
    path("runs/", views.run_create, name="evaluation_run_create"),
    path("runs/<int:pk>/", views.run_detail, name="evaluation_run"),
]
